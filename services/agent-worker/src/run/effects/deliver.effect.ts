import type { OutboxRequest } from "@nahida/outbox";
import { EffectStage, defineEffect } from "./effect";

/** A checked request with the id the run named it by. */
export type Delivery = OutboxRequest & { deliveryId: string };

/**
 * Deliveries through the outbox: replies, tools' sends, a scheduled turn's answer. Checked
 * when asked for; a refusal at commit (a channel removed meanwhile) fails the run. One
 * multi-row INSERT when none needs more than its row.
 */
export const deliverEffect = defineEffect<Delivery>({
  name: "deliver",
  stage: EffectStage.deliveries,
  async write(values, tx, env) {
    const deliveryIds: string[] = [];
    for (const request of values) {
      const written = await env.outbox.write(request, tx);
      if (!written.ok) throw new Error(`delivery to ${request.target} refused at commit: ${written.error.message}`);
      if (written.value.created) deliveryIds.push(written.value.delivery.id);
    }
    return { deliveryIds };
  },
  parts(values, env) {
    const part = env.outbox.writePart(values);
    return part ? { parts: [part], after: { deliveryIds: values.map((d) => d.deliveryId) } } : null;
  },
});
