//! An audit log's lines, one at a time, in bounded memory: a plain file or a gzip'd one
//! (rotated logs; told by the gzip magic bytes, not the name; several concatenated gzip
//! members read as one stream), read through one reused 256 KiB buffer. A line longer
//! than 16 MiB is skipped and said; a read that fails (a gzip file cut short) ends the
//! file with what was read before it.

use std::io::Read;
use std::path::Path;

use crate::error::Cause;

const CHUNK: usize = 256 * 1024;
/// A line longer than this is skipped (no audit entry is near it).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// What the next call gave.
pub enum NextLine<'a> {
    /// A line without its newline; `unterminated` when it is the file's last and had none.
    Line { text: &'a [u8], unterminated: bool },
    /// A line over `MAX_LINE` bytes was skipped.
    TooLong,
    /// The file ended.
    End,
    /// The file could not be read further: its error.
    Failed(std::io::Error),
}

/// Where the reader is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinesState {
    /// Handing out lines.
    Reading,
    /// Inside a line too long to keep: dropping bytes up to its newline.
    Skipping,
    /// Nothing more (the end, or a read error already given).
    Done,
}

/// The lines of one log file.
pub struct LogLines {
    source: Box<dyn Read>,
    pub gzip: bool,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    state: LinesState,
    /// Bytes of the file read so far, uncompressed.
    pub bytes: u64,
}

impl LogLines {
    /// Opens `path`, gzip'd or not.
    pub fn open(path: &Path) -> Result<LogLines, Cause> {
        let what = || format!("cannot read the audit log {}", path.display());
        let mut file = std::fs::File::open(path).map_err(|e| Cause::io(what(), e))?;
        let mut magic = [0u8; 2];
        let n = read_full(&mut file, &mut magic).map_err(|e| Cause::io(what(), e))?;
        let head = std::io::Cursor::new(magic[..n].to_vec());
        let gzip = n == 2 && magic == [0x1f, 0x8b];
        let raw = head.chain(file);
        let source: Box<dyn Read> = if gzip {
            Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(
                raw,
            )))
        } else {
            Box::new(raw)
        };
        Ok(LogLines {
            source,
            gzip,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            state: LinesState::Reading,
            bytes: 0,
        })
    }

    /// The next line.
    pub fn next_line(&mut self) -> NextLine<'_> {
        loop {
            match self.state {
                LinesState::Done => return NextLine::End,
                LinesState::Skipping => {
                    if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                        self.start += i + 1;
                        self.state = LinesState::Reading;
                        return NextLine::TooLong;
                    }
                    self.start = self.end;
                }
                LinesState::Reading => {
                    if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                        let from = self.start;
                        self.start += i + 1;
                        return NextLine::Line {
                            text: &self.buf[from..from + i],
                            unterminated: false,
                        };
                    }
                    if self.end - self.start >= MAX_LINE {
                        self.start = self.end;
                        self.state = LinesState::Skipping;
                        continue;
                    }
                }
            }
            match self.fill() {
                Ok(0) => {
                    let rest = (self.start, self.end);
                    let skipping = self.state == LinesState::Skipping;
                    self.state = LinesState::Done;
                    self.start = self.end;
                    if skipping {
                        return NextLine::TooLong;
                    }
                    if rest.1 > rest.0 {
                        return NextLine::Line {
                            text: &self.buf[rest.0..rest.1],
                            unterminated: true,
                        };
                    }
                    return NextLine::End;
                }
                Ok(_) => {}
                Err(e) => {
                    self.state = LinesState::Done;
                    return NextLine::Failed(e);
                }
            }
        }
    }

    /// Reads more after the kept partial line (moved to the front; the buffer grows only
    /// for a line longer than it, up to `MAX_LINE`).
    fn fill(&mut self) -> std::io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            if self.state == LinesState::Skipping {
                self.end = 0;
            } else {
                let grown = (self.buf.len() * 2).min(MAX_LINE + CHUNK);
                self.buf.resize(grown, 0);
            }
        }
        let n = loop {
            match self.source.read(&mut self.buf[self.end..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.end += n;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Reads until `buf` is full or the file ends; the count read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn all(path: &Path) -> (Vec<String>, Option<String>) {
        let mut lines = LogLines::open(path).unwrap();
        let mut out = Vec::new();
        loop {
            match lines.next_line() {
                NextLine::Line { text, unterminated } => out.push(format!(
                    "{}{}",
                    String::from_utf8_lossy(text),
                    if unterminated { "<eof>" } else { "" }
                )),
                NextLine::TooLong => out.push("<too long>".into()),
                NextLine::End => return (out, None),
                NextLine::Failed(e) => return (out, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn plain_and_gzip_lines_with_an_unterminated_last_one() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.log");
        std::fs::write(&plain, "one\ntwo\nthr").unwrap();
        assert_eq!(all(&plain).0, ["one", "two", "thr<eof>"]);
        let gz = dir.path().join("b");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"one\ntwo\n").unwrap();
        let mut bytes = enc.finish().unwrap();
        let mut second = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        second.write_all(b"three\n").unwrap();
        bytes.extend(second.finish().unwrap());
        std::fs::write(&gz, &bytes).unwrap();
        assert_eq!(
            all(&gz),
            (vec!["one".into(), "two".into(), "three".into()], None)
        );
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(all(&empty), (vec![], None));
    }

    #[test]
    fn a_gzip_cut_short_gives_what_it_had_then_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for i in 0..20_000 {
            writeln!(enc, "line {i} {}", "x".repeat(i % 97)).unwrap();
        }
        let bytes = enc.finish().unwrap();
        let cut = dir.path().join("cut.gz");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let (lines, failed) = all(&cut);
        assert!(lines.len() > 1000, "{}", lines.len());
        assert!(failed.is_some());
    }

    #[test]
    fn a_line_longer_than_the_limit_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("long");
        let mut text = "a\n".to_string();
        text.push_str(&"y".repeat(MAX_LINE + 10));
        text.push_str("\nb\n");
        std::fs::write(&p, text).unwrap();
        assert_eq!(all(&p).0, ["a", "<too long>", "b"]);
    }
}
