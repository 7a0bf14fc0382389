/**
 * Node flags for the auto-started background connection. It is a long-lived idle process
 * whose heap stays small; V8's default young generation (16 MiB semi-spaces) lets it grow
 * to ~70 MiB resident between holds. A 1 MiB semi-space keeps it under the 60 MiB target
 * at no measurable CPU cost (bench/consumer-idle.mjs, docs/performance.md).
 */
export const CONSUMER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];
