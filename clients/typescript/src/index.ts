/**
 * chronomem's TypeScript client: `new Client(url, {key, space})` and every verb of
 * `chronomem serve`, typed from the service's OpenAPI document, failing with chronomem's own
 * error classes. See README.md for the method ↔ Python verb ↔ route table.
 */
export * from "./client.js";
export * from "./errors.js";
export * from "./routes.js";
export type * from "./schema.js";
