//! iperf3's authentication, as iperf3 3.12 makes and checks it (src/iperf_auth.c and
//! iperf_api.c's `test_is_authorized`), so a stock iperf3 client with credentials can use a
//! headroom server and the reverse:
//!
//! - The client writes `user: NAME\npwd:  PASSWORD\nts:   UNIX_SECONDS` (`auth_text_format`),
//!   encrypts it with the server's RSA public key, PKCS#1 v1.5 padding (`RSA_PKCS1_PADDING`),
//!   and sends the ciphertext base64-encoded, on one line, as the `authtoken` parameter.
//! - The server decrypts it with its private key, refuses a timestamp more than the skew
//!   threshold (10 s by default, `--time-skew-threshold`) away from its own clock, and looks
//!   for a line `NAME,HASH` in the authorized users file, HASH being the hex SHA-256 of
//!   `{NAME}PASSWORD`. Empty lines, lines without a comma and lines starting with `#` are
//!   skipped. Failing any of it, the client gets SERVER_ERROR and IEAUTHTEST (142).
//!
//! Keys are PEM files as `openssl` writes them: the public key as a SubjectPublicKeyInfo
//! (`-----BEGIN PUBLIC KEY-----`, `openssl rsa -pubout`), the private key as PKCS#1
//! (`BEGIN RSA PRIVATE KEY`) or PKCS#8 (`BEGIN PRIVATE KEY`), unencrypted (iperf3 reads them
//! with PEM_read_bio_PUBKEY / PEM_read_bio_PrivateKey and no passphrase).
//!
//! PKCS#1 v1.5 encryption is what iperf3 3.12 speaks; it is not a modern construction, and
//! the `rsa` crate's decryption is not constant-time (RUSTSEC-2023-0071): the server decrypts
//! with blinding, and a token is only worth the few seconds of the skew threshold.

use super::proto::ProtoError;
#[cfg(feature = "net-auth")]
use base64::Engine as _;
#[cfg(feature = "net-auth")]
use rsa::pkcs1::DecodeRsaPrivateKey;
#[cfg(feature = "net-auth")]
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
#[cfg(feature = "net-auth")]
use rsa::traits::PublicKeyParts;
#[cfg(feature = "net-auth")]
use rsa::{Pkcs1v15Encrypt, RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256};
#[cfg(feature = "net-auth")]
use std::collections::HashMap;
use std::path::Path;
#[cfg(feature = "net-auth")]
use std::sync::{Arc, Mutex, PoisonError};

/// iperf3's default `--time-skew-threshold`, seconds (iperf_api.c).
pub const DEFAULT_SKEW_S: u32 = 10;
/// How far a token's time may be ahead of this server's clock, seconds: the time is in
/// whole seconds, so a client whose clock agrees with this one's to the millisecond can
/// still be a second ahead. A token from further in the future would stay valid longer than
/// the skew threshold after it was made.
pub const MAX_AHEAD_S: i64 = 2;
/// The largest server key, bits: each token a peer sends costs one private-key operation,
/// about 8 times the CPU of a 4096-bit key's for an 8192-bit one (80 ms on a 2 GHz core).
pub const MAX_KEY_BITS: usize = 4096;
/// The accepted tokens a server remembers (each until its time is past the skew threshold):
/// a bound on memory whatever the threshold; past it, a token is refused until some expire.
#[cfg(feature = "net-auth")]
const MAX_REMEMBERED: usize = 65_536;
/// The largest key or users file read (a key file is a few kB).
pub const MAX_FILE: u64 = 1 << 20;
/// The environment variable a client's password comes from, as iperf3 reads it.
pub const PASSWORD_ENV: &str = "IPERF3_PASSWORD";

#[cfg(feature = "net-auth")]
/// `auth_text_format` of iperf_auth.c.
fn plaintext(user: &str, password: &str, ts: i64) -> String {
    format!("user: {user}\npwd:  {password}\nts:   {ts}")
}

/// The hex SHA-256 of `{user}password`, as the authorized users file holds it.
pub fn password_hash(user: &str, password: &str) -> String {
    let digest = Sha256::digest(format!("{{{user}}}{password}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(feature = "net-auth")]
fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Why iperf3's authentication cannot be used here, when this headroom was built without it
/// (the board binaries leave it out); `None` when it can.
pub fn unavailable() -> Option<&'static str> {
    (!cfg!(feature = "net-auth")).then_some(
        "this headroom was built without iperf3's authentication (the board binaries leave it \
         out to stay under 5,000,000 B): run bench net with --username or \
         --rsa-private-key-path from a build that has it (`cargo build --release`)",
    )
}

/// A build without iperf3's authentication has no credentials: no value of these types
/// exists, and their constructors say why.
#[cfg(not(feature = "net-auth"))]
#[derive(Clone, Debug)]
pub enum ClientAuth {}

#[cfg(not(feature = "net-auth"))]
impl ClientAuth {
    pub fn new(_: &Path, _: &str, _: &str, _: &str) -> Result<ClientAuth, String> {
        Err(unavailable().unwrap_or_default().into())
    }

    pub fn token(&self) -> Result<String, String> {
        match *self {}
    }
}

/// See [`ClientAuth`]: no server key without iperf3's authentication.
#[cfg(not(feature = "net-auth"))]
#[derive(Clone, Debug)]
pub enum ServerAuth {}

#[cfg(not(feature = "net-auth"))]
impl ServerAuth {
    pub fn new(_: &Path, _: &str, _: ReadUsers, _: u32) -> Result<ServerAuth, String> {
        Err(unavailable().unwrap_or_default().into())
    }

    pub fn check(&self, _: Option<&str>) -> Result<(), ProtoError> {
        match *self {}
    }
}

/// How the server reads its authorized users file, again for every test: the caller's one
/// routine for the files a user names (cli's, which refuses a FIFO or a device and bounds
/// the size); the sentence on failure names the file.
pub type ReadUsers = std::sync::Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

#[cfg(feature = "net-auth")]
/// The client's credentials, encrypted for the server on each test.
#[derive(Clone, Debug)]
pub struct ClientAuth {
    key: RsaPublicKey,
    user: String,
    password: String,
}

#[cfg(feature = "net-auth")]
impl ClientAuth {
    /// `--username USER --rsa-public-key-path FILE` (`pem`, the file's text), the password
    /// from [`PASSWORD_ENV`].
    pub fn new(
        public_key: &Path,
        pem: &str,
        user: &str,
        password: &str,
    ) -> Result<ClientAuth, String> {
        let key = RsaPublicKey::from_public_key_pem(pem).map_err(|e| {
            format!(
                "{} is not an RSA public key in PEM (`openssl rsa -in private.pem -pubout` \
                 writes one): {e}",
                public_key.display()
            )
        })?;
        // sscanf's %s stops at white space: iperf3 cannot carry a name or password with it.
        for (what, v) in [("user name", user), ("password", password)] {
            if v.is_empty() || v.chars().any(char::is_whitespace) {
                return Err(format!(
                    "the {what} must be non-empty and without spaces (iperf3 reads it as one \
                     word)"
                ));
            }
        }
        Ok(ClientAuth {
            key,
            user: user.to_string(),
            password: password.to_string(),
        })
    }

    /// The `authtoken` parameter for a test starting now.
    pub fn token(&self) -> Result<String, String> {
        self.token_at(now_s())
    }

    fn token_at(&self, ts: i64) -> Result<String, String> {
        let text = plaintext(&self.user, &self.password, ts);
        let sealed = self
            .key
            .encrypt(&mut rand_core::OsRng, Pkcs1v15Encrypt, text.as_bytes())
            .map_err(|e| {
                format!("cannot encrypt the credentials with the server's public key: {e}")
            })?;
        Ok(base64::engine::general_purpose::STANDARD.encode(sealed))
    }
}

#[cfg(feature = "net-auth")]
/// The server's key and its authorized users.
#[derive(Clone)]
pub struct ServerAuth {
    key: RsaPrivateKey,
    users: ReadUsers,
    skew_s: u32,
    /// The tokens accepted (their SHA-256) and the time each stops being valid: a token is
    /// accepted once, so one seen on the wire cannot be used again.
    accepted: Arc<Mutex<HashMap<[u8; 32], i64>>>,
}

#[cfg(feature = "net-auth")]
impl std::fmt::Debug for ServerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("ServerAuth")
            .field("skew_s", &self.skew_s)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "net-auth")]
/// What a decrypted token says.
#[derive(Debug, PartialEq)]
struct Credentials {
    user: String,
    password: String,
    ts: i64,
}

#[cfg(feature = "net-auth")]
/// Parse `auth_text_format` as sscanf does: each literal word in turn, `%s` a run of
/// non-white-space characters, `%ld` a signed decimal; white space in the format matches
/// any white space.
fn parse_plaintext(text: &str) -> Option<Credentials> {
    let mut rest = text;
    let mut word = |label: &str| -> Option<&str> {
        rest = rest.trim_start().strip_prefix(label)?.trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (w, r) = rest.split_at(end);
        rest = r;
        (!w.is_empty()).then_some(w)
    };
    let user = word("user:")?.to_string();
    let password = word("pwd:")?.to_string();
    let ts = word("ts:")?;
    let digits = ts
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+')))
        .count();
    let ts = ts[..digits].parse().ok()?;
    Some(Credentials { user, password, ts })
}

#[cfg(feature = "net-auth")]
impl ServerAuth {
    /// `--rsa-private-key-path FILE --authorized-users-path FILE [--time-skew-threshold S]`.
    /// The users file is read again for every test, as iperf3 does, so it can be edited
    /// while the server runs.
    /// `pem` is the private key file's text; `users` reads the users file.
    pub fn new(
        private_key: &Path,
        pem: &str,
        users: ReadUsers,
        skew_s: u32,
    ) -> Result<ServerAuth, String> {
        let key = RsaPrivateKey::from_pkcs1_pem(pem)
            .or_else(|_| RsaPrivateKey::from_pkcs8_pem(pem))
            .map_err(|e| {
                format!(
                    "{} is not an unencrypted RSA private key in PEM (`openssl genrsa -out \
                     private.pem 2048` writes one; `openssl rsa -in KEY -out private.pem` \
                     removes a passphrase): {e}",
                    private_key.display()
                )
            })?;
        let bits = key.size() * 8;
        if bits > MAX_KEY_BITS {
            return Err(format!(
                "{} is a {bits}-bit key: give one of at most {MAX_KEY_BITS} bits (`openssl \
                 genrsa -out private.pem 4096`), as every token a client sends costs this \
                 server one operation with it",
                private_key.display()
            ));
        }
        users()?;
        if skew_s == 0 {
            return Err("--time-skew-threshold must be at least 1 second".into());
        }
        Ok(ServerAuth {
            key,
            users,
            skew_s,
            accepted: Arc::default(),
        })
    }

    /// Whether `token` (the client's `authtoken`) names an authorized user with the right
    /// password at about this time; the refusal is iperf3's IEAUTHTEST.
    pub fn check(&self, token: Option<&str>) -> Result<(), ProtoError> {
        self.check_at(token, now_s())
    }

    fn check_at(&self, token: Option<&str>, now: i64) -> Result<(), ProtoError> {
        let refuse = |what: &str| ProtoError::Auth(what.to_string());
        let token = token.ok_or_else(|| refuse("the client sent no credentials"))?;
        let sealed = base64::engine::general_purpose::STANDARD
            .decode(token.trim())
            .map_err(|_| refuse("the token is not base64"))?;
        // A PKCS#1 ciphertext is as long as the key: anything else is refused before the
        // private key is used.
        if sealed.len() != self.key.size() {
            return Err(refuse(&format!(
                "the token is {} bytes where this server's key makes {}",
                sealed.len(),
                self.key.size()
            )));
        }
        let text = self
            .key
            .decrypt_blinded(&mut rand_core::OsRng, Pkcs1v15Encrypt, &sealed)
            .map_err(|_| refuse("the token does not decrypt with this server's key"))?;
        let c = std::str::from_utf8(&text)
            .ok()
            .and_then(parse_plaintext)
            .ok_or_else(|| refuse("the token is not iperf3's user/pwd/ts text"))?;
        let skew = i64::from(self.skew_s);
        if now.saturating_sub(c.ts) > skew {
            return Err(refuse(&format!(
                "the token's time is {} s behind this server's (at most {skew} s allowed)",
                now.saturating_sub(c.ts)
            )));
        }
        if c.ts.saturating_sub(now) > MAX_AHEAD_S {
            return Err(refuse(&format!(
                "the token's time is {} s ahead of this server's (at most {MAX_AHEAD_S} s \
                 allowed: set the client's clock)",
                c.ts.saturating_sub(now)
            )));
        }
        let hash = password_hash(&c.user, &c.password);
        let users = (self.users)().map_err(|e| refuse(&e))?;
        let known = users.lines().any(|line| {
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with('#') {
                return false;
            }
            // strtok(buf, ","): the first two comma-separated fields.
            let mut fields = line.split(',').filter(|f| !f.is_empty());
            fields.next() == Some(c.user.as_str()) && fields.next() == Some(hash.as_str())
        });
        if !known {
            return Err(refuse("unknown user or wrong password"));
        }
        self.remember(&sealed, c.ts.saturating_add(skew), now)
            .map_err(|e| refuse(&e))
    }

    /// Accept the token `sealed` once: refused when it was accepted before and has not
    /// expired (a replay, also of two copies sent at once), or when too many are
    /// remembered. It is remembered until `expires` (Unix seconds).
    fn remember(&self, sealed: &[u8], expires: i64, now: i64) -> Result<(), String> {
        let id: [u8; 32] = Sha256::digest(sealed).into();
        let mut seen = self.accepted.lock().unwrap_or_else(PoisonError::into_inner);
        seen.retain(|_, &mut until| until >= now);
        if seen.contains_key(&id) {
            return Err("the token was already used (a token is accepted once)".into());
        }
        if seen.len() >= MAX_REMEMBERED {
            return Err(format!(
                "{MAX_REMEMBERED} tests were authorized within the last {} s: try again \
                 shortly",
                self.skew_s
            ));
        }
        seen.insert(id, expires);
        Ok(())
    }
}

#[cfg(test)]
#[cfg(feature = "net-auth")]
mod tests {
    use super::*;

    #[test]
    fn the_password_hash_is_iperf3s() {
        // iperf3's documentation example (docs/invoking.rst): `echo -n "{mario}rossi" |
        // sha256sum`.
        assert_eq!(
            password_hash("mario", "rossi"),
            "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b"
        );
    }

    /// A server and a client of one 1024-bit key (small: only the protocol is tested), with
    /// `mario`/`rossi` authorized.
    fn pair(dir: &Path) -> (ServerAuth, ClientAuth) {
        let key = RsaPrivateKey::new(&mut rand_core::OsRng, 1024).unwrap();
        let users = dir.join("users.csv");
        std::fs::write(
            &users,
            format!("mario,{}\n", password_hash("mario", "rossi")),
        )
        .unwrap();
        let client = ClientAuth {
            key: key.to_public_key(),
            user: "mario".into(),
            password: "rossi".into(),
        };
        let users: ReadUsers =
            Arc::new(move || std::fs::read_to_string(&users).map_err(|e| e.to_string()));
        let server = ServerAuth {
            key,
            users,
            skew_s: DEFAULT_SKEW_S,
            accepted: Arc::default(),
        };
        (server, client)
    }

    /// A token seen on the wire cannot be used again while it is valid, not even by two
    /// copies sent at once; two tokens of one user made in the same second are two tests.
    #[test]
    fn a_token_is_accepted_once() {
        let dir = tempfile::tempdir().unwrap();
        let (server, client) = pair(dir.path());
        let now = 1_700_000_000;
        let t = client.token_at(now).unwrap();
        server.check_at(Some(&t), now).unwrap();
        let again = server.check_at(Some(&t), now + 1).unwrap_err().to_string();
        assert!(again.contains("already used"), "{again}");
        server
            .check_at(Some(&client.token_at(now).unwrap()), now + 1)
            .unwrap();
        // Eight copies of one token at once: one test.
        let t = client.token_at(now).unwrap();
        let accepted = std::thread::scope(|sc| {
            let runs: Vec<_> = (0..8)
                .map(|_| sc.spawn(|| server.check_at(Some(&t), now + 2).is_ok()))
                .collect();
            runs.into_iter()
                .map(|r| r.join().unwrap())
                .filter(|&ok| ok)
                .count()
        });
        assert_eq!(accepted, 1);
    }

    /// A token's time may be up to the skew threshold behind this server's clock, and at
    /// most [`MAX_AHEAD_S`] ahead of it.
    #[test]
    fn a_token_from_the_future_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (server, client) = pair(dir.path());
        let now = 1_700_000_000;
        for (ts, ok) in [
            (now + 9, false),
            (now + 3, false),
            (now + 2, true),
            (now - 10, true),
            (now - 11, false),
        ] {
            let r = server.check_at(Some(&client.token_at(ts).unwrap()), now);
            assert_eq!(r.is_ok(), ok, "{} s: {r:?}", ts - now);
        }
        let e = server
            .check_at(Some(&client.token_at(now + 9).unwrap()), now)
            .unwrap_err()
            .to_string();
        assert!(e.contains("9 s ahead"), "{e}");
        // Not the length of this key's ciphertext: refused before decrypting.
        let short = base64::engine::general_purpose::STANDARD.encode([7u8; 100]);
        let e = server.check_at(Some(&short), now).unwrap_err().to_string();
        assert!(e.contains("100 bytes"), "{e}");
    }

    #[test]
    fn plaintext_reads_as_sscanf_does() {
        let t = plaintext("mario", "rossi", 1_700_000_000);
        assert_eq!(t, "user: mario\npwd:  rossi\nts:   1700000000");
        assert_eq!(
            parse_plaintext(&t),
            Some(Credentials {
                user: "mario".into(),
                password: "rossi".into(),
                ts: 1_700_000_000
            })
        );
        assert_eq!(parse_plaintext("user: a\npwd:  b\n"), None);
        assert_eq!(parse_plaintext("garbage"), None);
        assert_eq!(
            parse_plaintext("user: a\npwd:  b\nts:   -5x").unwrap().ts,
            -5
        );
    }
}

#[cfg(test)]
#[cfg(not(feature = "net-auth"))]
mod without_auth {
    use super::*;

    /// A build without iperf3's authentication (the board binaries) says so in one sentence
    /// when credentials are asked for, on either side.
    #[test]
    fn credentials_are_refused_with_one_sentence() {
        let why = unavailable().expect("a build without net-auth says why");
        assert!(
            why.contains("built without iperf3's authentication"),
            "{why}"
        );
        let client = ClientAuth::new(Path::new("key.pem"), "", "mario", "rossi");
        assert_eq!(client.err().as_deref(), Some(why));
        let users: ReadUsers = std::sync::Arc::new(|| Ok(String::new()));
        let server = ServerAuth::new(Path::new("key.pem"), "", users, DEFAULT_SKEW_S);
        assert_eq!(server.err().as_deref(), Some(why));
    }
}
