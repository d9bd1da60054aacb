//! Reports, log files, JSON results and HTML pages, compared with pgbench's
//! where pgbench has them. Every module works in databases of its own on
//! the binary's one shared PostgreSQL 18 server (`report_pgbench` starts
//! its own cluster; `html` and `compare` open pages in Chromium).

#[path = "../common/mod.rs"]
mod common;
#[path = "../html_support/mod.rs"]
mod html_support;
#[path = "../report_support/mod.rs"]
mod report_support;
#[path = "../results_support/mod.rs"]
mod results_support;

mod app_pool;
mod compare;
mod crafted;
mod docs_diff;
mod docs_examples;
mod failures_diff;
mod html;
mod longrun_diff;
mod pages;
mod report_diff;
mod report_logs_diff;
mod report_pgbench;
mod report_text;
mod result_files;
mod results_diff;
mod shape_diff;
mod sweep;
