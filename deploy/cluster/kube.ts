/** The cluster connection is the kube room's (kube/): the deploy room's files keep their import. */
export * from '../../kube/index.ts';
