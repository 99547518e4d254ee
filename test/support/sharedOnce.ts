/**
 * A resource the global setups of several vitest projects share: each project loads its setup files as modules of its
 * own, so the one instance is kept on globalThis of vitest's main process, made by the first project that needs it and
 * released when the last one is done.
 */
interface Shared<T> {
  value: Promise<T>;
  users: number;
}

export function sharedOnce<T>(
  key: string,
  make: () => Promise<T>,
  release: (value: T) => Promise<void>,
): { acquire: () => Promise<T>; release: () => Promise<void> } {
  const slot = `__hubExportTests:${key}`;
  const store = globalThis as unknown as Record<string, Shared<T> | undefined>;
  return {
    acquire: async () => {
      const shared = (store[slot] ??= { value: make(), users: 0 });
      shared.users += 1;
      return shared.value;
    },
    release: async () => {
      const shared = store[slot];
      if (!shared || --shared.users > 0) return;
      store[slot] = undefined;
      await release(await shared.value);
    },
  };
}
