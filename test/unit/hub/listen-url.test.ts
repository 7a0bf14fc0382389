import type { NetworkInterfaceInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { interfaceUrls, reachableUrl, wildcardFamily } from '../../../src/hub/server/listen-url.js';

const nic = (address: string, family: 'IPv4' | 'IPv6', internal = false): NetworkInterfaceInfo =>
  ({ address, family, internal, netmask: '', mac: '', cidr: null, ...(family === 'IPv6' ? { scopeid: 0 } : {}) }) as NetworkInterfaceInfo;

const interfaces = {
  lo: [nic('127.0.0.1', 'IPv4', true), nic('::1', 'IPv6', true)],
  eth0: [nic('192.0.2.2', 'IPv4'), nic('fd00::2', 'IPv6'), nic('fe80::fc:ff:fe00:1', 'IPv6')],
  wlan0: [nic('10.0.0.3', 'IPv4')],
  // The same address on two interfaces (a bridge) is one URL.
  br0: [nic('10.0.0.3', 'IPv4')],
};

describe('a listen address as URLs', () => {
  it('knows a wildcard in any spelling, and nothing else for one', () => {
    for (const h of ['::', '::0', '0:0:0:0:0:0:0:0']) expect(wildcardFamily(h), h).toBe(6);
    expect(wildcardFamily('0.0.0.0')).toBe(4);
    for (const h of ['127.0.0.1', '::1', '192.0.2.2', 'localhost', 'hub.example', '0']) expect(wildcardFamily(h), h).toBeNull();
  });

  it('reaches a wildcard at its family loopback, any other host at itself', () => {
    expect(reachableUrl('0.0.0.0', 8417)).toBe('http://127.0.0.1:8417');
    expect(reachableUrl('::', 8417)).toBe('http://[::1]:8417');
    expect(reachableUrl('192.0.2.2', 8417)).toBe('http://192.0.2.2:8417');
    expect(reachableUrl('fd00::2', 8417)).toBe('http://[fd00::2]:8417');
  });

  it("lists a wildcard's interface addresses but loopback and link-local, IPv6 only for ::", () => {
    expect(interfaceUrls('0.0.0.0', 80, interfaces)).toEqual(['http://192.0.2.2:80', 'http://10.0.0.3:80']);
    expect(interfaceUrls('::', 80, interfaces)).toEqual(['http://192.0.2.2:80', 'http://[fd00::2]:80', 'http://10.0.0.3:80']);
    expect(interfaceUrls('0.0.0.0', 80, { lo: interfaces.lo })).toEqual([]);
    expect(interfaceUrls('192.0.2.2', 80, interfaces)).toBeNull();
  });
});
