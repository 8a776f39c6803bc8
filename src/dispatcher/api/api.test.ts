// The dispatcher API on its default store, SQLite (a real file in a temp folder).
import { dispatcherApiSuite } from './api-suite'

dispatcherApiSuite('SQLite', async () => undefined)
