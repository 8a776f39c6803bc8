// Cuckoo serves most analysis routes under /v1 too; real clients call both.
export const withV1 = (path: string): string[] => [path, `/v1${path}`]
