// Reads and writes Arrow IPC with Apache Arrow's JavaScript implementation
// (npm package apache-arrow, pinned in package.json), an implementation
// independent of the Go one gpc uses. gpc's interoperability test
// (internal/cli/interop_test.go) drives it; install it with `npm ci` in
// this directory.
//
//   node roundtrip.mjs write SPEC.json OUT   write the table SPEC describes
//   node roundtrip.mjs read IN               print IN (stream or file) as JSON
//
// SPEC: {"format": "stream"|"file", "metadata": {...}, "batches": [rows, ...],
//        "columns": [{"name", "type", "size", "values"}, ...]}
// with type one of float64, float32, int32, int64, utf8, bool, fixedlist
// (FixedSizeList<float64>[size]) or list (List<float64>); null values are
// nulls, and a float may be given as a string ("NaN", "Infinity").
//
// The JSON read prints holds every number as the string JavaScript's
// Number.prototype.toString gives (the shortest that reads back exactly),
// 64-bit integers as decimal strings, lists as arrays, nulls as null.
import { createRequire } from 'module';
import { readFileSync, writeFileSync } from 'fs';

const require = createRequire(import.meta.url);
const A = require('apache-arrow');
const {
  Field, FixedSizeList, List, Float64, Float32, Int32, Int64, Utf8, Bool,
  Table, Schema, RecordBatch, vectorFromArray, tableToIPC, tableFromIPC,
} = A;

const num = (v) => (v === null ? null : Number(v));

function vector(col) {
  const item = () => new Field('item', new Float64(), false);
  switch (col.type) {
    case 'float64': return vectorFromArray(col.values.map(num), new Float64());
    case 'float32': return vectorFromArray(col.values.map(num), new Float32());
    case 'int32': return vectorFromArray(col.values, new Int32());
    case 'int64': return vectorFromArray(col.values.map((v) => (v === null ? null : BigInt(v))), new Int64());
    case 'utf8': return vectorFromArray(col.values, new Utf8());
    case 'bool': return vectorFromArray(col.values, new Bool());
    case 'fixedlist': return vectorFromArray(col.values.map((r) => (r === null ? null : r.map(num))), new FixedSizeList(col.size, item()));
    case 'list': return vectorFromArray(col.values.map((r) => (r === null ? null : r.map(num))), new List(item()));
  }
  throw new Error(`unknown column type ${col.type}`);
}

function write(specPath, out) {
  const spec = JSON.parse(readFileSync(specPath, 'utf8'));
  const cols = {};
  for (const c of spec.columns) cols[c.name] = vector(c);
  const t = new Table(cols);
  const schema = new Schema(t.schema.fields, new Map(Object.entries(spec.metadata || {})));
  const whole = new RecordBatch(schema, t.batches[0].data);
  // Split into the batches asked for: slices, so that the arrays start at
  // an offset, as a reader must expect.
  const batches = [];
  let at = 0;
  for (const n of spec.batches || [t.numRows]) {
    batches.push(whole.slice(at, at + n));
    at += n;
  }
  if (at !== t.numRows) throw new Error(`batches cover ${at} of ${t.numRows} rows`);
  writeFileSync(out, tableToIPC(new Table(schema, batches), spec.format || 'stream'));
}

function value(v) {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'number': case 'bigint': return String(v);
    case 'string': case 'boolean': return v;
  }
  if (typeof v.toArray === 'function') return Array.from(v.toArray(), value);
  if (ArrayBuffer.isView(v) || Array.isArray(v)) return Array.from(v, value);
  throw new Error(`cannot print ${v}`);
}

function read(path) {
  const t = tableFromIPC(readFileSync(path));
  const out = {
    fields: t.schema.fields.map((f) => ({ name: f.name, type: String(f.type), nullable: f.nullable })),
    metadata: Object.fromEntries(t.schema.metadata),
    numRows: t.numRows,
    batches: t.batches.length,
    columns: {},
  };
  for (const f of t.schema.fields) {
    const v = t.getChild(f.name);
    const vals = [];
    for (let i = 0; i < t.numRows; i++) vals.push(value(v.get(i)));
    out.columns[f.name] = vals;
  }
  process.stdout.write(JSON.stringify(out));
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'write' && args.length === 2) write(...args);
else if (cmd === 'read' && args.length === 1) read(...args);
else {
  process.stderr.write('usage: node roundtrip.mjs write SPEC.json OUT | read IN\n');
  process.exit(2);
}
