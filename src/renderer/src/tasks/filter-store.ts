// The Tasks page's filters, sort, search, scroll offset and selection outlive the page: opening a
// task and coming back shows the same rows, where they were. (Not persisted: a new session starts
// fresh.) Any change of what is listed starts again at the top.
import { create } from 'zustand'
import type { SearchKind } from '../../../shared/search-query'
import type { TaskSort } from '../../../shared/api/ui-schemas'

export type SearchIn = SearchKind | 'any'

interface TasksView {
  statuses: string[]
  categories: string[]
  /** The search box's text, and the kind it is searched as (the picker next to it). */
  text: string
  kind: SearchIn
  /** The query sent (GET /aviary/tasks?q=), once typing pauses. */
  q: string
  sort: TaskSort
  order: 'asc' | 'desc'
  scrollOffset: number
  selected: number
  toggleStatus(status: string): void
  clearStatuses(): void
  toggleCategory(category: string): void
  clearCategories(): void
  setText(text: string): void
  setKind(kind: SearchIn): void
  setQ(q: string): void
  setSort(sort: TaskSort, order: 'asc' | 'desc'): void
  setScrollOffset(offset: number): void
  setSelected(index: number): void
}

const top = { scrollOffset: 0, selected: 0 }
const toggle = (list: string[], item: string): string[] => (list.includes(item) ? list.filter((x) => x !== item) : [...list, item])

export const useTasksView = create<TasksView>()((set) => ({
  statuses: [],
  categories: [],
  text: '',
  kind: 'any',
  q: '',
  sort: 'id',
  order: 'desc',
  ...top,
  toggleStatus: (status) => set((s) => ({ statuses: toggle(s.statuses, status), ...top })),
  clearStatuses: () => set({ statuses: [], ...top }),
  toggleCategory: (category) => set((s) => ({ categories: toggle(s.categories, category), ...top })),
  clearCategories: () => set({ categories: [], ...top }),
  setText: (text) => set({ text }),
  setKind: (kind) => set({ kind }),
  setQ: (q) => set({ q, ...top }),
  setSort: (sort, order) => set({ sort, order, ...top }),
  setScrollOffset: (scrollOffset) => set({ scrollOffset }),
  setSelected: (selected) => set({ selected })
}))
