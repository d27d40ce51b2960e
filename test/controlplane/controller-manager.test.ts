/**
 * The control plane's kube-controller-manager: its PV binder binds a claim
 * to a matching PV, and its protection controllers let both be deleted
 * (the API server's StorageObjectInUseProtection puts their finalizers on).
 */
import test from 'ava';
import { CoreV1Api } from '@kubernetes/client-node';
import { waitFor } from '../helpers/wait.js';
import { testKubeConfig } from './shared.js';

test('kube-controller-manager binds a claim to a static PV, then both can be deleted', async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const id = `kcm-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name: id } } });
  await core.createPersistentVolume({
    body: {
      metadata: { name: id },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: id,
        csi: { driver: 'static.example.com', volumeHandle: id },
      },
    },
  });
  await core.createNamespacedPersistentVolumeClaim({
    namespace: id,
    body: { metadata: { name: 'c' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: id, resources: { requests: { storage: '1Gi' } } } },
  });
  const claim = await waitFor(
    async () => {
      const c = await core.readNamespacedPersistentVolumeClaim({ name: 'c', namespace: id });
      return c.status?.phase === 'Bound' ? c : undefined;
    },
    { what: 'claim bound by the PV binder' },
  );
  t.is(claim.spec?.volumeName, id);
  t.true(claim.metadata?.finalizers?.includes('kubernetes.io/pvc-protection'));
  await core.deleteNamespacedPersistentVolumeClaim({ name: 'c', namespace: id });
  await waitFor(async () => !(await core.listNamespacedPersistentVolumeClaim({ namespace: id })).items.length, {
    what: 'claim deleted (pvc-protection released)',
  });
  await core.deletePersistentVolume({ name: id });
  await waitFor(async () => !(await core.listPersistentVolume()).items.some((p) => p.metadata?.name === id), {
    what: 'PV deleted (pv-protection released)',
  });
});
