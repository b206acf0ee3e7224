import type { IncomingMessage } from "node:http";

/** Reads a request body whole; throws once it passes `maxBytes`, as a platform refuses an oversize request. */
export async function readRequestBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new Error("Request Entity Too Large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
