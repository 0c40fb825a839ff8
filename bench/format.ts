/** How the reports write numbers. */
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const evs = (n: number) => `${int(n)} ev/s`;
export const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;
export const secs = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} s`;
/** {@link ms} beside a bound `n` must stay within: with more decimals where rounding would hide which side of it `n` is (1.004 ms beside 1 ms). */
export const msWithin = (n: number, bound: number) => {
  let digits = n < 10 ? 2 : 1;
  while (digits < 6 && Number(n.toFixed(digits)) <= bound !== n <= bound) digits++;
  return `${n.toFixed(digits)} ms`;
};
export const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MB`;
export const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
export const ratio = (n: number) => `${n.toFixed(2)}×`;
