// Preload for admin.test.ts (NODE_OPTIONS=--require=<this file>): os.networkInterfaces throws, as
// it does where the OS refuses to list the interfaces (Android: uv_interface_addresses, EACCES).
const os = require('node:os');
os.networkInterfaces = () => {
  throw Object.assign(new Error('A system error occurred: uv_interface_addresses returned Unknown system error 13 (Unknown system error 13)'), {
    code: 'ERR_SYSTEM_ERROR',
  });
};
require('node:module').syncBuiltinESMExports();
