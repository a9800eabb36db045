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
}
