// YARA for the report: the scanner (scanner.ts) behind the function the pipeline calls for the
// sample (target.file.yara), dropped files (dropped[].yara) and memory dumps (procmemory[].yara).
export { yaraScan, loadRules, YaraRulesError, MAX_MATCHES_PER_PATTERN } from './scanner.js'
