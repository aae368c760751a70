use super::*;

const GPUS: &str = include_str!("../../../../tests/fixtures/telemetry/nvidia-smi/h100-query-gpu.csv");
const APPS: &str = include_str!("../../../../tests/fixtures/telemetry/nvidia-smi/h100-query-apps.csv");
const NO_DEVICES: &str = include_str!("../../../../tests/fixtures/telemetry/nvidia-smi/no-devices.txt");

#[test]
fn recorded_device_lines_become_samples() {
    let s = parse_gpus("gpu-03", GPUS).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].node.as_str(), s[0].index), ("gpu-03", 0));
    assert_eq!(s[0].uuid.as_deref(), Some("GPU-4a2d1f0e-1b3c-4d5e-8f90-123456789abc"));
    assert_eq!(s[0].product.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!((s[0].utilisation, s[0].memory_used_mb, s[0].memory_total_mb), (Some(97.0), Some(71234), Some(81559)));
    assert_eq!((s[0].power_watts, s[0].temperature_c), (Some(650.12), Some(64.0)));
    // Bracketed words are figures the device does not have, not zeros.
    assert_eq!((s[1].power_watts, s[1].temperature_c, s[1].utilisation), (None, None, Some(3.0)));
}

#[test]
fn empty_output_is_no_gpus_and_a_driver_message_is_an_error_naming_the_line() {
    assert!(parse_gpus("n", "").unwrap().is_empty());
    let err = parse_gpus("n", NO_DEVICES).unwrap_err();
    assert!(err.contains("line 1") && err.contains("No devices were found"), "{err}");
    let err = parse_gpus("n", "x, a, b, 1, 2, 3, 4, 5\n").unwrap_err();
    assert!(err.contains("not a device index"), "{err}");
}

#[test]
fn processes_join_their_device_by_uuid() {
    let mut s = parse_gpus("gpu-03", GPUS).unwrap();
    attach_processes(&mut s, APPS).unwrap();
    assert_eq!(s[0].processes.len(), 2, "the ghost device's process is left out");
    assert_eq!((s[0].processes[0].pid, s[0].processes[0].command.as_str()), (41822, "/usr/bin/python3"));
    assert_eq!(s[0].processes[0].memory_mb, Some(70100));
    // A comma inside the name stays in the name; an unknown memory figure is none.
    assert_eq!(s[0].processes[1].command, "torchrun --nproc,8");
    assert_eq!(s[0].processes[1].memory_mb, None);
    assert!(s[1].processes.is_empty());
    let err = attach_processes(&mut s, "GPU-1, many\n").unwrap_err();
    assert!(err.contains("line 1"), "{err}");
    let err = attach_processes(&mut s, "GPU-1, pid, cmd, 3\n").unwrap_err();
    assert!(err.contains("not a process id"), "{err}");
}
