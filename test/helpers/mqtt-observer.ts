import { connectAsync, type IClientPublishOptions, type MqttClient } from 'mqtt';

// An independent MQTT client that records what it receives, so tests can wait
// for a topic (and a payload condition) that arrived earlier or arrives later.

export interface Received {
  topic: string;
  text: string;
  retain: boolean;
}

export class Observer {
  readonly received: Received[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload, packet) => {
      this.received.push({ topic, text: payload.toString('utf8'), retain: packet.retain });
      for (const wake of this.waiters) wake();
    });
  }

  static async connect(url: string, filters: string[] = []): Promise<Observer> {
    const client = await connectAsync(url, { reconnectPeriod: 0, clientId: `observer-${Math.random().toString(16).slice(2)}` });
    const observer = new Observer(client);
    if (filters.length > 0) await client.subscribeAsync(filters, { qos: 1 });
    return observer;
  }

  /** The first message (already received or still to come) on `topic` whose payload satisfies `accept`. */
  waitFor(topic: string, accept: (text: string) => boolean = () => true, timeoutMs = 8000): Promise<Received> {
    const find = () => this.received.find((message) => message.topic === topic && accept(message.text));
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (!found) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const seen = this.received.filter((message) => message.topic === topic).map((message) => message.text);
        reject(new Error(`no matching message on ${topic} within ${timeoutMs} ms; seen: ${JSON.stringify(seen)}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Waits for the first matching JSON payload and returns it parsed. */
  async waitForJson(topic: string, accept: (body: any) => boolean = () => true, timeoutMs?: number): Promise<any> {
    const message = await this.waitFor(topic, (text) => accept(JSON.parse(text)), timeoutMs);
    return JSON.parse(message.text);
  }

  forget(): void {
    this.received.length = 0;
  }

  async publish(topic: string, payload: string, options: IClientPublishOptions = {}): Promise<void> {
    await this.client.publishAsync(topic, payload, options);
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}
