import { describe, expect, it } from 'vitest';
import { isLoopbackAddress, isServedHost, servedHosts } from '../../src/observability/http-access.js';

describe('who the console server answers', () => {
  it('counts only addresses reachable from this machine alone as loopback', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]']) expect([host, isLoopbackAddress(host)]).toEqual([host, true]);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '127.0.0.1.nip.io', 'localhost.example.com', 'db.internal']) expect([host, isLoopbackAddress(host)]).toEqual([host, false]);
  });

  it('matches a Host by its name with any port, or by its name and port as allowed', () => {
    const served = servedHosts('10.0.0.5', ['Audit.Internal', 'console.example.com:8443', '[fd00::7]']);
    for (const host of ['10.0.0.5:9464', 'audit.internal', 'AUDIT.INTERNAL:80', 'console.example.com:8443', '[fd00::7]:9464', '[::1]', 'localhost']) {
      expect([host, isServedHost(served, host)]).toEqual([host, true]);
    }
    for (const host of [undefined, '', '10.0.0.6', 'console.example.com', 'audit.internal.evil.example.com', 'localhost:9464:evil', '[fd00::8]']) {
      expect([host, isServedHost(served, host)]).toEqual([host, false]);
    }
  });
});
