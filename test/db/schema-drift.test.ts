import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "@nahida/db";
import { createTestDatabase, type TestDatabase } from "../support/infra";
import { REPO_ROOT } from "../support/processes";

// Prisma's own schema parser (WebAssembly, offline) gives the models exactly as the
// generated client sees them; the migrated database must match them column for column.
const require = createRequire(import.meta.url);
const wasm = require("@prisma/prisma-schema-wasm") as { get_dmmf(params: string): string };

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: string;
  type: string;
  isList: boolean;
  isRequired: boolean;
  nativeType?: [string, string[]] | null;
}
interface DmmfModel {
  name: string;
  dbName?: string | null;
  fields: DmmfField[];
}
interface DmmfIndex {
  model: string;
  type: "id" | "normal" | "unique" | "fulltext";
  fields: { name: string }[];
}

const dmmf = JSON.parse(
  wasm.get_dmmf(JSON.stringify({ prismaSchema: readFileSync(`${REPO_ROOT}/prisma/schema.prisma`, "utf8") })),
) as { datamodel: { models: DmmfModel[]; indexes: DmmfIndex[] } };

function expectedType(field: DmmfField): string {
  const native = field.nativeType?.[0];
  const base = (() => {
    switch (field.type) {
      case "String":
        return native === "Uuid" ? "uuid" : "text";
      case "Int":
        return "int4";
      case "BigInt":
        return "int8";
      case "Boolean":
        return "bool";
      case "Float":
        return "float8";
      case "DateTime":
        return native === "Timestamptz" ? "timestamptz" : "timestamp";
      case "Json":
        return "jsonb";
      default:
        return `unsupported:${field.type}`;
    }
  })();
  return field.isList ? `_${base}` : base;
}

describe("migrations match schema.prisma", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase("drift");
  });
  afterAll(async () => t?.drop());

  it("has every model's table and column with its type and nullability, and nothing else", async () => {
    const columns = await t.db.pool.query<{ table_name: string; column_name: string; udt_name: string; is_nullable: string }>(`
      SELECT table_name, column_name, udt_name, is_nullable FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'`);
    const actual = new Map(columns.rows.map((c) => [`${c.table_name}.${c.column_name}`, c]));
    const expected = new Set<string>();
    for (const model of dmmf.datamodel.models) {
      const table = model.dbName ?? model.name;
      for (const field of model.fields.filter((f) => f.kind === "scalar" || f.kind === "enum")) {
        const key = `${table}.${field.dbName ?? field.name}`;
        expected.add(key);
        const column = actual.get(key);
        expect(column, `column ${key} missing`).toBeDefined();
        expect(column!.udt_name, `type of ${key}`).toBe(expectedType(field));
        // Prisma creates scalar lists without NOT NULL.
        if (!field.isList) expect(column!.is_nullable, `nullability of ${key}`).toBe(field.isRequired ? "NO" : "YES");
      }
    }
    expect([...actual.keys()].filter((k) => !expected.has(k)), "columns not in schema.prisma").toEqual([]);
  });

  it("has every @@unique, @@index and @id of the schema", async () => {
    const indexes = await t.db.pool.query<{ table_name: string; columns: string[]; is_unique: boolean; is_partial: boolean }>(`
      SELECT t.relname AS table_name, i.indisunique AS is_unique, i.indpred IS NOT NULL AS is_partial,
             array_agg(a.attname ORDER BY k.ord)::text[] AS columns
        FROM pg_index i
        JOIN pg_class t ON t.oid = i.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
        CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
       GROUP BY t.relname, i.indexrelid, i.indisunique, i.indpred`);
    const actual = new Set(
      indexes.rows.filter((i) => !i.is_partial).map((i) => `${i.table_name}(${i.columns.join(",")})${i.is_unique ? " unique" : ""}`),
    );
    const models = new Map(dmmf.datamodel.models.map((m) => [m.name, m]));
    const expected = new Set<string>();
    for (const index of dmmf.datamodel.indexes) {
      const model = models.get(index.model)!;
      const columns = index.fields.map((f) => {
        const field = model.fields.find((x) => x.name === f.name)!;
        return field.dbName ?? field.name;
      });
      expected.add(`${model.dbName ?? model.name}(${columns.join(",")})${index.type === "normal" ? "" : " unique"}`);
    }
    expect([...expected].filter((e) => !actual.has(e)), "indexes in schema.prisma missing from the database").toEqual([]);
    const allowedExtra = [...actual].filter((a) => a !== "_prisma_migrations(id) unique" && !expected.has(a));
    expect(allowedExtra, "indexes the schema does not declare").toEqual([]);
  });

  it("re-running the migrations is a no-op, and concurrent runs apply each migration once", async () => {
    const results = await Promise.all([1, 2, 3].map(() => migrate({ databaseUrl: t.url })));
    for (const r of results) expect(r.applied).toEqual([]);
    const rows = await t.db.pool.query(
      `SELECT migration_name, count(*)::int AS n FROM "_prisma_migrations" GROUP BY migration_name HAVING count(*) > 1`,
    );
    expect(rows.rows).toEqual([]);
  });
});
