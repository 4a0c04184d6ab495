// Whether a process still runs, and waiting for one to end (sibling processes the tests do not own).

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once `pid` is gone (checked every 50 ms, for at most `ms`): true, or false if it still runs then. */
export async function gone(pid: number, ms = 20_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}
