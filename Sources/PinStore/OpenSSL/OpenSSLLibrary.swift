internal import COpenSSL

/// Facts about the OpenSSL the process runs on, for logs and the command-line tool.
package enum OpenSSLLibrary {
    /// The runtime library's version text, e.g. "OpenSSL 3.0.19 27 Jan 2026".
    package static var versionText: String {
        String(cString: OpenSSL_version(OPENSSL_VERSION))
    }

    /// The runtime library's version number (0xMNN00PP0L).
    package static var versionNumber: UInt {
        UInt(OpenSSL_version_num())
    }

    /// Initializes libcrypto without its exit-time cleanup, once per process; every entry point
    /// that can be a process's first use of OpenSSL reads it.
    ///
    /// By default OpenSSL frees its locks and tables in an `atexit` handler. A store's
    /// background work (a list download verifying signatures on every core) can still be
    /// running when a server calls `exit`, and then crashes in a freed lock: a child process
    /// exiting mid-update crashed 7 times in 40 that way (`ProcessExitTests`). The operating
    /// system reclaims the memory anyway. (If something else in the process initialized
    /// libcrypto first, its handler is already registered; nothing here can take it back.)
    package static let initialized: Void = {
        _ = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
    }()
}
