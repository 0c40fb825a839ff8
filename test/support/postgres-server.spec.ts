import { describe, expect, it } from 'vitest';
import { choosePostgresSource } from './postgres-server.js';

describe('choosing where the tests find PostgreSQL', () => {
  const docker = (answers: boolean) => async () => answers;

  it('takes DATABASE_URL first, without asking Docker', async () => {
    let asked = false;
    const source = await choosePostgresSource({
      databaseUrl: 'postgres://x@127.0.0.1/db',
      dockerAvailable: async () => {
        asked = true;
        return true;
      },
    });
    expect(source).toBe('database-url');
    expect(asked).toBe(false);
  });

  it('takes testcontainers when a Docker engine answers', async () => {
    expect(await choosePostgresSource({ databaseUrl: undefined, dockerAvailable: docker(true) })).toBe('testcontainers');
    expect(await choosePostgresSource({ databaseUrl: '', dockerAvailable: docker(true) })).toBe('testcontainers');
  });

  it('falls back to an embedded PostgreSQL', async () => {
    expect(await choosePostgresSource({ databaseUrl: undefined, dockerAvailable: docker(false) })).toBe('embedded');
  });
});
