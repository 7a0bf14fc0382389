/** The package version, in a module of its own so that printing it loads nothing else. */
export const VERSION = '0.12.3';
