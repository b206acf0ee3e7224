import { LaneItemKind, type Result } from "@nahida/contracts";
import type { ChatRunRead } from "@nahida/db";
import type { Run } from "../run";

/** An item of the batch with the row it points at. */
export interface KindItem<Row> {
  itemId: string;
  refId: string;
  row: Row;
}

/**
 * One kind of lane item and how a run handles it. `load` reads the rows of all the batch's
 * items of this kind in one read (`chatRead`: a chat lane's read, which carries its inbound
 * messages); a ref without a usable row is an error with its reason, and its item fails.
 * `handle` gets each run of consecutive items of this kind, in lane order, and does its
 * work through the {@link Run}: turns, answers and every other effect go into the run's
 * unit of work.
 */
export interface LaneKind<Row> {
  kind: string;
  load(refIds: readonly string[], chatRead: ChatRunRead | null): Promise<ReadonlyMap<string, Result<Row, string>>>;
  handle(items: readonly KindItem<Row>[], run: Run): Promise<void>;
}

export const defineLaneKind = <Row>(kind: LaneKind<Row>): LaneKind<Row> => kind;

/** The worker's lane item kinds by name; a second kind of one name is refused. */
export class LaneKinds {
  private readonly kinds = new Map<string, LaneKind<unknown>>();

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own row type
  register(...kinds: LaneKind<any>[]): this {
    for (const kind of kinds) {
      if (this.kinds.has(kind.kind)) throw new Error(`lane item kind ${kind.kind} is registered twice`);
      this.kinds.set(kind.kind, kind);
    }
    return this;
  }

  /** The kind's handler, or why an item of it cannot be handled here. */
  get(kind: string): Result<LaneKind<unknown>, string> {
    const found = this.kinds.get(kind);
    if (found) return { ok: true, value: found };
    if (LaneItemKind.safeParse(kind).success) return { ok: false, error: `this worker does not handle ${kind} lane items yet` };
    const known = [...new Set([...LaneItemKind.options, ...this.kinds.keys()])].join(", ");
    return { ok: false, error: `unknown lane item kind ${JSON.stringify(kind.slice(0, 64))}; known: ${known}` };
  }
}
