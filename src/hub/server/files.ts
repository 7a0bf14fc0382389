/** Files in a Hub data dir that the admin commands read (this module loads nothing else). */
export const HUMAN_TOKEN_FILE = 'human-token';
export const HUB_RECORD_FILE = 'hub.json';
export const STORE_FILE = 'hub.sqlite';
