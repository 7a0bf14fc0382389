// The background connection: drains one state dir's mailbox into its spool, verifies
// every delivery, and acks exactly what the reader has read. Loads the Hub client.
export { runConsumer, readConsumerKnobs, type ConsumerEnd, type ConsumerKnobs, type ConsumerOptions } from './start.js';
export { consumerHome } from './home.js';
export type { Stop, StopReason } from './stops.js';
// What other folders use of the consumer's decisions, so they judge exactly as it does.
export { readerAttendance, type Attendance } from './attendance.js';
export { verifyDelivery } from './verify.js';
export { RetryBudget } from './backoff.js';
