//! `nvidia-smi --query-gpu` and `--query-compute-apps` output, read into samples.
