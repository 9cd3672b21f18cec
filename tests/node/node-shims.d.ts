// The few Node APIs tests/node/generated_client.ts uses, typed here so the type check needs no
// @types/node (the DOM library types fetch, timers, console and crypto.randomUUID).
declare const process: {
  argv: string[];
  env: Record<string, string | undefined>;
  exit(code: number): never;
};

declare module 'node:child_process' {
  export function execFileSync(file: string, args: readonly string[]): Uint8Array;
}
