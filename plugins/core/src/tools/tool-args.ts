import { z } from "zod";

/** A session, event or task id as a tool takes it: a UUID in any case names the same row, as the database compares it. */
export const Id = z.uuid().transform((id) => id.toLowerCase());
