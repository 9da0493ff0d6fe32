/** What the test run was given (tests/clients/test_typescript.py starts the services). */
import assert from "node:assert/strict";

export function required(name: string): string {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run these tests through tests/clients/test_typescript.py`);
  return value;
}

/** A request the client sent, as the service saw its method and path. */
export interface Sent {
  method: string;
  path: string;
  headers: { [name: string]: string };
}

/** A `fetch` that keeps what it sends. */
export function recording(into: Sent[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    into.push({ method: init?.method ?? "GET", path: decodeURIComponent(url.pathname), headers });
    return fetch(input, init);
  };
}

/** The error `promise` rejects with, checked to be an instance of `cls`. */
export async function failure<E extends Error>(
  promise: Promise<unknown>,
  cls: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${cls.name}, but the call succeeded`);
}

export const same = (a: string | null | undefined, b: string): void =>
  assert.equal(Date.parse(a ?? "nope"), Date.parse(b), `${a} is not ${b}`);
