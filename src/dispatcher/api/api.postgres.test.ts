// The same API tests on PostgreSQL (a throwaway cluster, test/postgres.ts).
import { usePostgres } from '../../../test/postgres'
import { dispatcherApiSuite } from './api-suite'

const pg = usePostgres()
dispatcherApiSuite('PostgreSQL', () => pg.newDatabase())
