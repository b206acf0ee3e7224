import fp from "fastify-plugin";
import { MAX_JSON_DEPTH, NahidaError, jsonTextDepth } from "@nahida/contracts";

/**
 * Every JSON body a Nahida server takes: nested deeper than `maxDepth` it is a 400
 * (`json_too_deep`) before any handler sees it, so nothing that walks a parsed body can be
 * made to recurse without end. The rest is Fastify's own parser (prototype poisoning
 * refused as before).
 */
export const jsonBodyPlugin = fp<{ maxDepth?: number }>(async (app, o) => {
  const maxDepth = o.maxDepth ?? MAX_JSON_DEPTH;
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (jsonTextDepth(body as string, maxDepth) > maxDepth) {
      done(new NahidaError("json_too_deep", `the JSON body nests deeper than ${maxDepth} levels`), undefined);
      return;
    }
    parse(request, body as string, done);
  });
});
