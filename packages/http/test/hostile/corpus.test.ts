/**
 * The hostile-input corpus (CorpusSuite.ts) against the composed server on storage-memory.
 */
import * as CorpusSuite from "./CorpusSuite.ts"

CorpusSuite.define("hostile-input corpus, storage-memory", await CorpusSuite.prepare("memory"))
