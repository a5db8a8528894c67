// Sparkplug B topic names: spBv1.0/<group>/<type>/<edge node>[/<device>].

export const NAMESPACE = 'spBv1.0';

export type NodeMessage = 'NBIRTH' | 'NDEATH' | 'NDATA' | 'NCMD';
export type DeviceMessage = 'DBIRTH' | 'DDEATH' | 'DDATA' | 'DCMD';

export class SparkplugTopics {
  readonly ncmd: string;
  readonly dcmdFilter: string;
  private readonly dcmdPrefix: string;

  constructor(
    readonly groupId: string,
    readonly edgeNodeId: string,
  ) {
    this.ncmd = this.node('NCMD');
    this.dcmdPrefix = `${NAMESPACE}/${groupId}/DCMD/${edgeNodeId}/`;
    this.dcmdFilter = `${this.dcmdPrefix}+`;
  }

  node(type: NodeMessage): string {
    return `${NAMESPACE}/${this.groupId}/${type}/${this.edgeNodeId}`;
  }

  device(type: DeviceMessage, deviceId: string): string {
    return `${NAMESPACE}/${this.groupId}/${type}/${this.edgeNodeId}/${deviceId}`;
  }

  /** The device id of a DCMD topic, or undefined for any other topic. */
  dcmdDevice(topic: string): string | undefined {
    if (!topic.startsWith(this.dcmdPrefix)) return undefined;
    const id = topic.slice(this.dcmdPrefix.length);
    return id === '' || id.includes('/') ? undefined : id;
  }

  static state(hostId: string): string {
    return `${NAMESPACE}/STATE/${hostId}`;
  }
}
