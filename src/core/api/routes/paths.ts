// Cuckoo serves most analysis routes under /v1 too, and real clients call both. A route file
// writes its path once; the app adds the /v1 alias of every path listed here (app.ts,
// installV1Aliases), in the plugin that registered the route, so the alias has the same hooks,
// parsers and schemas. A path listed here that no route registers stops the app from starting.
export const V1_PATHS: ReadonlySet<string> = new Set([
  // create.routes.ts
  '/tasks/create/file', '/tasks/create/url', '/tasks/create/submit',
  // tasks.routes.ts
  '/tasks/list', '/tasks/list/:limit', '/tasks/list/:limit/:offset', '/tasks/sample/:sample_id', '/tasks/view/:id',
  '/tasks/delete/:id', '/tasks/reschedule/:id', '/tasks/reschedule/:id/:priority',
  // results.routes.ts
  '/tasks/report/:id', '/tasks/report/:id/:format', '/tasks/screenshots/:id', '/tasks/screenshots/:id/:screenshot', '/pcap/get/:task',
  // files.routes.ts
  '/files/view/md5/:md5', '/files/view/sha256/:sha256', '/files/view/id/:id', '/files/get/:sha256',
  // status.routes.ts
  '/cuckoo/status', '/sandbox/status', '/machines/list', '/machines/view/:name',
  // events.routes.ts
  '/tasks/timeline/:id'
])
