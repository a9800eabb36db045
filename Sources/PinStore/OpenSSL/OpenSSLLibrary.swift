internal import COpenSSL

/// Facts about the OpenSSL the process runs on, for logs and the command-line tool.
enum OpenSSLLibrary {
    /// The runtime library's version text, e.g. "OpenSSL 3.0.19 27 Jan 2026".
    static var versionText: String {
        String(cString: OpenSSL_version(OPENSSL_VERSION))
    }

    /// The runtime library's version number (0xMNN00PP0L).
    static var versionNumber: UInt {
        UInt(OpenSSL_version_num())
    }
}
