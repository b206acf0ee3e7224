/** One part of a multipart/form-data body. `filename` is set only for file parts. */
export interface MultipartPart {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

/** Raised for a body that does not follow RFC 7578 framing. */
export class MultipartParseError extends Error {
  override readonly name = "MultipartParseError";
}

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");

/** Reads the `boundary` parameter of a multipart Content-Type header, quoted or not. */
export function multipartBoundary(contentType: string): string | undefined {
  const params = parseHeaderParams(contentType);
  return params.get("boundary") || undefined;
}

/**
 * Splits a complete multipart/form-data body into its parts.
 *
 * Accepts both browser-style headers (`Content-Disposition: form-data; name="a"; filename="b"`)
 * and grammY's compact form (`content-disposition:form-data;name="a";filename=b`).
 */
export function parseMultipartForm(body: Buffer, boundary: string): MultipartPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  // Every delimiter after the first is preceded by CRLF, which belongs to the delimiter, not the part.
  const innerDelimiter = Buffer.concat([CRLF, delimiter]);
  const parts: MultipartPart[] = [];

  let cursor = body.indexOf(delimiter);
  if (cursor === -1) throw new MultipartParseError("multipart body has no opening boundary");
  cursor += delimiter.length;

  for (;;) {
    if (body.subarray(cursor, cursor + 2).toString("latin1") === "--") return parts;
    // Transport padding (spaces/tabs) may follow a delimiter before its CRLF.
    while (body[cursor] === 0x20 || body[cursor] === 0x09) cursor++;
    if (!body.subarray(cursor, cursor + 2).equals(CRLF)) throw new MultipartParseError("boundary not followed by CRLF");
    cursor += 2;

    // Searching from the CRLF just consumed also finds the blank line of a part without headers.
    const headerEnd = body.indexOf(HEADER_END, cursor - 2);
    if (headerEnd === -1) throw new MultipartParseError("part headers are not terminated");
    const headerBlock = body.subarray(cursor, Math.max(cursor, headerEnd)).toString("utf8");
    const dataStart = headerEnd + HEADER_END.length;
    const dataEnd = body.indexOf(innerDelimiter, dataStart);
    if (dataEnd === -1) throw new MultipartParseError("part is not terminated by a boundary");

    parts.push(toPart(headerBlock, body.subarray(dataStart, dataEnd)));
    cursor = dataEnd + innerDelimiter.length;
  }
}

function toPart(headerBlock: string, data: Buffer): MultipartPart {
  const headers = new Map<string, string>();
  for (const line of headerBlock.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const disposition = headers.get("content-disposition");
  if (!disposition) throw new MultipartParseError("part has no content-disposition");
  const params = parseHeaderParams(disposition);
  const name = params.get("name");
  if (name === undefined) throw new MultipartParseError("part has no name");
  const filename = params.get("filename*") ?? params.get("filename");
  return {
    name,
    ...(filename !== undefined ? { filename } : {}),
    ...(headers.has("content-type") ? { contentType: headers.get("content-type") } : {}),
    data: Buffer.from(data),
  };
}

/** Parses `value; key=token; key="quoted \" string"; key*=UTF-8''percent%20encoded` into lowercase keys. */
function parseHeaderParams(header: string): Map<string, string> {
  const params = new Map<string, string>();
  let i = header.indexOf(";");
  if (i === -1) return params;
  while (i < header.length) {
    i++;
    while (header[i] === " " || header[i] === "\t") i++;
    const eq = header.indexOf("=", i);
    if (eq === -1) break;
    const key = header.slice(i, eq).trim().toLowerCase();
    i = eq + 1;
    let value = "";
    if (header[i] === '"') {
      i++;
      while (i < header.length && header[i] !== '"') {
        if (header[i] === "\\" && i + 1 < header.length) i++;
        value += header[i];
        i++;
      }
      i = header.indexOf(";", i);
      if (i === -1) i = header.length;
    } else {
      const end = header.indexOf(";", i);
      value = header.slice(i, end === -1 ? header.length : end).trim();
      i = end === -1 ? header.length : end;
    }
    params.set(key, key.endsWith("*") ? decodeExtendedValue(value) : value);
  }
  return params;
}

/** RFC 5987 `charset'language'percent-encoded`; only UTF-8 is worth supporting in practice. */
function decodeExtendedValue(value: string): string {
  const match = /^([^']*)'[^']*'(.*)$/.exec(value);
  if (!match) return value;
  try {
    return decodeURIComponent(match[2] ?? "");
  } catch {
    return value;
  }
}
