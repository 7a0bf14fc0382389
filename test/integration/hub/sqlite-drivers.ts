import { SQLITE_DRIVERS, sqliteDriverAvailable, type SqliteDriverName } from '../../../src/hub/server/sqlite-driver.js';

/**
 * The SQLite drivers that load on this Node, for `describe.each`: a driver that cannot load
 * (better-sqlite3 built for another Node's ABI, node:sqlite before Node 22.16) is left out
 * and the reason printed, so a skipped driver is never silent.
 */
export function eachSqliteDriver(): { driver: SqliteDriverName }[] {
  const drivers: { driver: SqliteDriverName }[] = [];
  for (const driver of SQLITE_DRIVERS) {
    const a = sqliteDriverAvailable(driver);
    if (a.ok) drivers.push({ driver });
    else console.warn(`SQLite driver ${driver} SKIPPED on Node ${process.version}: ${a.reason}`);
  }
  return drivers;
}
