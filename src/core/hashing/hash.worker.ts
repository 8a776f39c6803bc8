// Placeholder; the hashing worker is written with the ingest pipeline.
export {}
