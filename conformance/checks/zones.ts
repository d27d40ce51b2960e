/** ZonesService checks (legacy lookups; run only when the provider declares the service). */
import { Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import type { GetZoneResponse } from '../../proto/gen/ccm/provider/v1/zones.js';
import { ErrorReason } from '../../sdk/protocol.js';
import { expect, type Check } from '../kit.js';
import { Code } from '../rpc.js';
import { expectCode } from './common.js';

export const zoneChecks: Check[] = [
  {
    id: 'zones/absent',
    title: 'GetZone answers; GetZoneByProviderId and GetZoneByNodeName of an absent instance answer NOT_FOUND/INSTANCE_NOT_FOUND',
    run: async (k) => {
      k.needService(Service.SERVICE_ZONES);
      const z = k.rpc.conn.zones;
      const r = await k.rpc.call<GetZoneResponse>(z, 'GetZone', { meta: k.meta() });
      expect(r.zone, 'GetZone answered without a zone');
      await expectCode(
        k,
        z,
        'GetZoneByProviderId',
        { meta: k.meta(), providerId: `${k.caps.providerName}://${k.prefix}-absent-id` },
        Code.NOT_FOUND,
        ErrorReason.INSTANCE_NOT_FOUND,
      );
      await expectCode(k, z, 'GetZoneByNodeName', { meta: k.meta(), nodeName: `${k.prefix}-absent` }, Code.NOT_FOUND, ErrorReason.INSTANCE_NOT_FOUND);
    },
  },
  {
    id: 'zones/test-instance',
    title: "GetZoneByProviderId and GetZoneByNodeName of the test instance answer InstanceMetadata's zone and region",
    run: async (k) => {
      k.needService(Service.SERVICE_ZONES);
      const t = k.needTestNode();
      for (const [method, req] of [
        ['GetZoneByProviderId', { meta: k.meta(), providerId: t.providerId }],
        ['GetZoneByNodeName', { meta: k.meta(), nodeName: t.name }],
      ] as const) {
        const zone = (await k.rpc.call<GetZoneResponse>(k.rpc.conn.zones, method, req)).zone;
        expect(
          zone?.failureDomain === t.zone && zone.region === t.region,
          `${method} answered zone ${JSON.stringify(zone?.failureDomain)} region ${JSON.stringify(zone?.region)}; InstanceMetadata says ${JSON.stringify(t.zone)}/${JSON.stringify(t.region)}`,
        );
      }
    },
  },
];
