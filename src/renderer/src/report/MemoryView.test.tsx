// @vitest-environment jsdom
// The task's memory tab: each process dump is a download (the API's /memory/get/{id}/{name}
// online), with its pid, size, YARA matches and the URLs processing found in it.
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render, screen } from '@testing-library/react'
import { MemoryView } from './FilesViews'
import type { ReportSources } from './model'

afterEach(cleanup)

const sources: ReportSources = {
  screenshot: () => null, memoryDump: (n) => `/memory/get/7/${n.replace(/\.dmp$/, '')}`, pcap: () => null, droppedFile: () => null, droppedArchive: () => null
}

describe('MemoryView', () => {
  it('lists the dumps as downloads with their URLs', () => {
    const report = {
      procmemory: [{ file: '/a/memory/4242-1.dmp', pid: 4242, num: 1, size: 8192, yara: [{ name: 'memonly_url' }], urls: ['http://memonly.example.net/cfg?id=7'], regions: [] }]
    }
    render(<MemoryView report={report} sources={sources} />)
    const link = screen.getByRole('link', { name: '4242-1.dmp' })
    expect(link.getAttribute('href')).toBe('/memory/get/7/4242-1')
    expect(screen.getByText('http://memonly.example.net/cfg?id=7')).toBeTruthy()
    expect(screen.getByText('memonly_url')).toBeTruthy()
  })

  it('says when the run made no dump', () => {
    render(<MemoryView report={{ procmemory: [] }} sources={sources} />)
    expect(screen.getByText('The analysis made no memory dump.')).toBeTruthy()
  })
})
