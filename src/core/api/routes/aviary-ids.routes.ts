// The IDS's rule sets (/aviary/ids/rules): list them, import one (an ET Open/ET Pro tarball or a
// .rules file, sent as the request's body), remove an imported one. Backs the UI's Rules panel;
// `aviary rules` does the same on a data folder (processing/suricata/rulesets.ts).
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ApiContext } from '../context'
import { ErrorBody } from '../../../shared/api/schemas'
import { RuleSetImported, RuleSetList } from '../../../shared/api/ids'
import { badRequest, notFound } from '../../errors'
import type { RuleSet } from '../../processing/suricata/rulesets'
import { loadSuricataSettings, MAX_IMPORT_BYTES, RuleImportError, SuricataSettingsError } from '../../processing/suricata/settings'

// The rule sets' reader (tar-stream, zlib) loads with the first request that needs it, not with the service.
const ruleSets = () => import('../../processing/suricata/rulesets')

const tags = ['ids']
const view = (s: RuleSet) => ({ name: s.name, kind: s.kind, files: s.files.length, rules: s.rules, updated: s.updated, source: s.source })
const NameParams = Type.Object({ name: Type.String({ maxLength: 64 }) })
const ImportQuery = Type.Object({
  filename: Type.String({ minLength: 1, maxLength: 255, description: "the file's name: .tar.gz, .tgz, .tar or .rules" }),
  name: Type.Optional(Type.String({ maxLength: 64, description: "the set's name (default: the file's)" })),
  replace: Type.Optional(Type.Boolean({ description: 'replace a set of that name' }))
})

function bundledRules(dir: string): string | null {
  try {
    return loadSuricataSettings(dir).bundledRules
  } catch (err) {
    if (err instanceof SuricataSettingsError) throw badRequest('suricata.json', err.message)
    throw err
  }
}

export const aviaryIdsRoutes = (ctx: ApiContext): FastifyPluginAsync => async (base) => {
  const app = base.withTypeProvider<TypeBoxTypeProvider>()
  const dir = ctx.idsDir
  if (dir === undefined) return
  app.addContentTypeParser(['application/octet-stream', 'application/gzip', 'application/x-gzip', 'application/x-tar', 'text/plain'],
    { parseAs: 'buffer', bodyLimit: MAX_IMPORT_BYTES }, (_req, body, done) => done(null, body))

  app.get('/aviary/ids/rules', {
    schema: { tags, summary: 'The rule sets the IDS step loads, with their rule counts and ages', response: { 200: RuleSetList, 400: ErrorBody, 500: ErrorBody } }
  }, async () => ({ rulesets: (await ruleSets()).listRuleSets(dir, { bundledRules: bundledRules(dir) }).map(view) }))

  app.post('/aviary/ids/rules', {
    schema: {
      tags, summary: 'Import a rule set: the body is an ET Open/ET Pro tarball (its rules/*.rules are kept) or a .rules file',
      querystring: ImportQuery, response: { 200: RuleSetImported, 400: ErrorBody, 413: ErrorBody, 500: ErrorBody }
    }
  }, async (request) => {
    const body = request.body
    if (!Buffer.isBuffer(body) || body.length === 0) throw badRequest('body', 'must be the rule file, sent as application/octet-stream')
    try {
      const r = await (await ruleSets()).importRuleSet(dir, body, { fileName: request.query.filename, ...(request.query.name ? { name: request.query.name } : {}), replace: request.query.replace === true })
      return { ruleset: view(r.set), replaced: r.replaced }
    } catch (err) {
      if (err instanceof RuleImportError) {
        const [field = 'file', ...rest] = err.message.split(': ')
        throw badRequest(field === 'file' ? 'body' : field, rest.join(': '))
      }
      throw err
    }
  })

  app.delete('/aviary/ids/rules/:name', {
    schema: { tags, summary: 'Remove an imported rule set', params: NameParams, response: { 200: ErrorBody, 400: ErrorBody, 404: ErrorBody, 500: ErrorBody } }
  }, async (request) => {
    let removed: boolean
    try {
      removed = await (await ruleSets()).removeRuleSet(dir, request.params.name)
    } catch (err) {
      if (err instanceof RuleImportError) throw badRequest('name', err.message.replace(/^name: /, ''))
      throw err
    }
    if (!removed) throw notFound(`No imported rule set named ${request.params.name}`)
    return { message: `Rule set ${request.params.name} removed` }
  })
}
