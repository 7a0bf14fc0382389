import { parentPid, processCommand, processStartTime } from '../../spool/index.js';
import type { ProcessInspector } from './host-program.js';

/** The real process table, read through the spool's liveness helpers. */
export const processInspector: ProcessInspector = { parentPid, command: processCommand, startTime: processStartTime };
