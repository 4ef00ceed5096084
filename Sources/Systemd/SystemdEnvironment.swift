import CSystemd

/// What libsystemd says about the environment atsgate was started in.
public enum SystemdEnvironment {
    /// The host was booted with systemd (sd_booted(3)).
    public static var isBooted: Bool { sd_booted() > 0 }
}
