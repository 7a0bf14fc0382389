import { userConfigPath } from '../config/index.js';
import { EXIT } from '../core/index.js';
import { leaseEpilogue, readerRefusal, type NamedFlags, type ReaderIO, type ReaderLeg } from '../reader/index.js';
import { spooledPastStoodDown, spooledSession, STATE_FILES } from '../spool/index.js';
import { connectionSettings, type ResolvedBridge } from './resolve/index.js';

export const BRIDGE_NAME = 'oh-hai bridge';
const NAME = BRIDGE_NAME;

/** The session leg of the reading loop: `oh-hai bridge` after its state dir resolved. */
export function sessionLeg(r: ResolvedBridge, named: NamedFlags, agent: string | null, io: ReaderIO): ReaderLeg {
  const stateDir = r.stateDir;
  return {
    name: NAME,
    logName: 'reader',
    stateDir,
    declared: r.sessionKey.declared,
    waitMs: r.settings.bridge.waitSeconds * 1000,
    wanted: connectionSettings(r, r.sessionKey, agent),
    directory: { stateRoot: r.stateRoot, hubUrl: r.hubUrl, agentId: r.agentId },
    named,
    warnings: r.warnings,
    refusal: (facts) => ({
      exit: EXIT.held,
      code: 'reader_held',
      message: readerRefusal({ facts, session: stateDir.read('session'), keyFrom: r.sessionKey.describe, readerPath: stateDir.path(STATE_FILES.reader) }),
    }),
    noPolicyLine: () =>
      `no sender policy is declared: directives, notifies, responses and receipts are delivered, but every addressed ask/task is refused and left unacked ` +
      `(the Hub keeps redelivering it). To accept them, add [bridge] allow_from to ${userConfigPath(io.env)} or pass --allow-from any-in-account / agent:<id>, ` +
      `then oh-hai session close --keep-connection and run oh-hai bridge again.`,
    epilogue: (consumer, nowMs) =>
      leaseEpilogue(
        NAME,
        stateDir.read('session'),
        consumer,
        nowMs,
        (from) => spooledSession(stateDir.dir, from),
        () => (r.sessionKey.pinned === null ? spooledPastStoodDown(stateDir.dir) : null),
      ),
  };
}
