// The IDS's rule sets as /aviary/ids/rules answers them: the route documents its answers with
// these and the UI's Rules panel checks what it reads against them.
import { Type, type Static } from 'typebox'

export const RuleSetView = Type.Object({
  name: Type.String(),
  kind: Type.Union([Type.Literal('bundled'), Type.Literal('aviary'), Type.Literal('imported')]),
  files: Type.Integer({ description: 'rule files in the set' }),
  rules: Type.Integer({ description: 'enabled rules' }),
  updated: Type.Number({ description: 'when the set was made or imported, epoch ms' }),
  source: Type.Union([Type.String(), Type.Null()])
})
export type RuleSetView = Static<typeof RuleSetView>

/** GET /aviary/ids/rules. */
export const RuleSetList = Type.Object({ rulesets: Type.Array(RuleSetView) })
export type RuleSetList = Static<typeof RuleSetList>

/** POST /aviary/ids/rules: the set imported, and whether it replaced one of that name. */
export const RuleSetImported = Type.Object({ ruleset: RuleSetView, replaced: Type.Boolean() })
export type RuleSetImported = Static<typeof RuleSetImported>
