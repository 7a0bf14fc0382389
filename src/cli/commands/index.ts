import type { Command } from 'commander';
import type { CommandHost } from '../host.js';
import { register as teach } from './teach/register.js';
import { register as send } from './send/register.js';
import { register as messages } from './messages/register.js';
import { register as fleet } from './fleet/register.js';
import { register as session } from './session/register.js';
import { register as inbox } from './inbox/register.js';
import { register as hub } from './hub/register.js';
import { register as demo } from './demo/register.js';
import { register as account } from './account/register.js';
import { register as bridge } from './bridge/register.js';
import { register as consumer } from './consumer/register.js';
import { register as doctor } from './doctor/register.js';

/**
 * Every command group registers itself here. A registration only declares flags;
 * its run function is imported lazily inside the action, so `oh-hai bridge` does not
 * load the Hub server, the network stack or other commands' code.
 */
export type Registration = (program: Command, host: CommandHost) => void;

export const registrations: Registration[] = [teach, send, messages, fleet, session, inbox, hub, demo, account, bridge, consumer, doctor];
