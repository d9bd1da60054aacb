//! Throwaway PostgreSQL instances.
