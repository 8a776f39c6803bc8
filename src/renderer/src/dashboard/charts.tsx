// The Dashboard's charts (recharts). Each sits in a <figure> whose caption and aria-label carry
// the numbers in words, so the figures read without the picture (screen readers, tests, a
// glance at the legend).
import type { JSX, ReactNode } from 'react'
import {
  Area, AreaChart, CartesianGrid, Cell, Legend, Pie, PieChart, PolarAngleAxis, RadialBar, RadialBarChart,
  ResponsiveContainer, Tooltip, XAxis, YAxis
} from 'recharts'
import { counted, formatBytes } from '../format'

/** Same hues as StatusBadge, mid-tones that read on light and dark backgrounds. */
export const STATE_COLORS: Record<string, string> = {
  pending: '#a1a1aa',
  running: '#0ea5e9',
  completed: '#6366f1',
  reported: '#10b981',
  recovered: '#f59e0b',
  failed_analysis: '#ef4444',
  failed_processing: '#dc2626',
  failed_reporting: '#b91c1c',
  other: '#78716c'
}
const colorOf = (status: string): string => STATE_COLORS[status] ?? '#71717a'
const label = (status: string): string => status.replace('_', ' ')

const TOOLTIP_STYLE = { backgroundColor: 'rgb(24 24 27 / 0.92)', color: '#fafafa', border: 'none', borderRadius: 4, fontSize: 12 }

export function Panel({ title, children, className = '' }: { title: string; children: ReactNode; className?: string }): JSX.Element {
  return (
    <figure className={`flex flex-col gap-2 rounded-lg border border-zinc-200 p-3 dark:border-zinc-800 ${className}`}>
      <figcaption className="text-sm font-medium text-zinc-600 dark:text-zinc-300">{title}</figcaption>
      {children}
    </figure>
  )
}

/** Task counts by state: a donut with the total in its middle and a legend with every count. */
export function StatesChart({ states, total }: { states: { status: string; count: number }[]; total: number }): JSX.Element {
  const shown = states.filter((s) => s.count > 0)
  const summary = `${counted(total, 'task')}: ${states.map((s) => `${label(s.status)} ${s.count}`).join(', ')}`
  return (
    <div className="flex items-center gap-4">
      <div role="img" aria-label={summary} className="relative h-44 w-44 shrink-0">
        <ResponsiveContainer width="100%" height="100%">
          <PieChart>
            <Pie data={shown.length > 0 ? shown : [{ status: 'none', count: 1 }]} dataKey="count" nameKey="status"
              innerRadius="62%" outerRadius="100%" stroke="none" isAnimationActive={false}>
              {(shown.length > 0 ? shown : [{ status: 'none' }]).map((s) => (
                <Cell key={s.status} fill={shown.length > 0 ? colorOf(s.status) : '#e4e4e7'} />
              ))}
            </Pie>
            {shown.length > 0 && <Tooltip contentStyle={TOOLTIP_STYLE} itemStyle={{ color: '#fafafa' }} formatter={(v, n) => [v, label(String(n))]} />}
          </PieChart>
        </ResponsiveContainer>
        <div className="pointer-events-none absolute inset-0 flex flex-col items-center justify-center">
          <span className="text-2xl font-semibold tabular-nums" data-testid="tasks-total">{total}</span>
          <span className="text-xs text-zinc-500">tasks</span>
        </div>
      </div>
      <ul className="grid grid-cols-1 gap-x-4 gap-y-0.5 text-sm sm:grid-cols-2" aria-label="Tasks by state">
        {states.map((s) => (
          <li key={s.status} data-state={s.status} className="flex items-center gap-2">
            <span aria-hidden className="inline-block h-2.5 w-2.5 rounded-sm" style={{ background: colorOf(s.status) }} />
            <span className="text-zinc-600 dark:text-zinc-300">{label(s.status)}</span>
            <span className="ml-auto font-medium tabular-nums">{s.count}</span>
          </li>
        ))}
      </ul>
    </div>
  )
}

function tone(pct: number): string {
  return pct >= 90 ? '#dc2626' : pct >= 75 ? '#f59e0b' : '#0ea5e9'
}

/**
 * A half-circle gauge: `value` of `max`, with a line of detail under it. `invert` colours by
 * what is left instead (machines available: few left is the warning).
 */
export function Gauge({ value, max, center, detail, name, invert = false }: {
  value: number; max: number; center: string; detail: ReactNode; name: string; invert?: boolean
}): JSX.Element {
  const pct = max > 0 ? Math.min(100, Math.max(0, (value / max) * 100)) : 0
  const fill = invert ? tone(100 - pct) : tone(pct)
  return (
    <div className="flex flex-col items-center">
      {/* Twice as wide as high, at most 11 rem: the half circle (radii relative to the height) fits any card. */}
      <div role="img" aria-label={`${name}: ${center}`} className="relative aspect-[2/1] w-full max-w-44">
        <ResponsiveContainer width="100%" height="100%">
          <RadialBarChart data={[{ pct, fill }]} startAngle={180} endAngle={0} cx="50%" cy="100%" innerRadius="130%" outerRadius="190%" barSize={14}>
            <PolarAngleAxis type="number" domain={[0, 100]} tick={false} axisLine={false} />
            <RadialBar dataKey="pct" background={{ fill: 'rgb(161 161 170 / 0.25)' }} cornerRadius={4} isAnimationActive={false} />
          </RadialBarChart>
        </ResponsiveContainer>
        <span className="absolute inset-x-0 bottom-0 text-center text-lg font-semibold tabular-nums">{center}</span>
      </div>
      <div className="mt-1 text-center text-xs text-zinc-500">{detail}</div>
    </div>
  )
}

export function DiskGauge({ used, total, name = 'Disk' }: { used: number; total: number; name?: string }): JSX.Element {
  const pct = total > 0 ? Math.round((used / total) * 100) : 0
  return (
    <Gauge name={name} value={used} max={total} center={`${pct}%`}
      detail={<span title={`${used.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} bytes used`}>{formatBytes(used)} used of {formatBytes(total)} · {formatBytes(total - used)} free</span>} />
  )
}

export function CpuGauge({ load, cores }: { load: number[]; cores: number | null }): JSX.Element {
  const one = load[0] ?? 0
  const max = cores ?? Math.max(1, Math.ceil(one))
  return (
    <Gauge name="CPU load" value={one} max={max} center={one.toFixed(2)}
      detail={<span title="load average over 1, 5 and 15 minutes">{load.map((l) => l.toFixed(2)).join(' / ')}{cores !== null ? ` on ${cores} cores` : ''}</span>} />
  )
}

export function MachinesGauge({ available, total }: { available: number; total: number }): JSX.Element {
  return (
    <Gauge name="Machines available" value={available} max={total} invert={total > 0} center={`${available} / ${total}`}
      detail={total === 0 ? 'no machines configured' : `${total - available} busy`} />
  )
}

/** Tasks added and finished per day: two areas over the last days. */
export function PerDayChart({ days }: { days: { day: string; added: number; finished: number }[] }): JSX.Element {
  const added = days.reduce((a, d) => a + d.added, 0)
  const finished = days.reduce((a, d) => a + d.finished, 0)
  return (
    <div role="img" aria-label={`Over ${counted(days.length, 'day')}: ${counted(added, 'task')} added, ${finished.toLocaleString('en-US')} finished`} className="h-56 w-full text-zinc-500">
      <ResponsiveContainer width="100%" height="100%">
        <AreaChart data={days} margin={{ top: 4, right: 8, bottom: 0, left: -16 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="rgb(161 161 170 / 0.3)" vertical={false} />
          <XAxis dataKey="day" tickFormatter={(d: string) => d.slice(5)} tick={{ fill: 'currentColor', fontSize: 11 }} minTickGap={16} />
          <YAxis allowDecimals={false} tick={{ fill: 'currentColor', fontSize: 11 }} />
          <Tooltip contentStyle={TOOLTIP_STYLE} />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Area type="monotone" dataKey="added" name="added" stroke="#0ea5e9" fill="#0ea5e9" fillOpacity={0.25} isAnimationActive={false} />
          <Area type="monotone" dataKey="finished" name="finished" stroke="#10b981" fill="#10b981" fillOpacity={0.25} isAnimationActive={false} />
        </AreaChart>
      </ResponsiveContainer>
    </div>
  )
}
