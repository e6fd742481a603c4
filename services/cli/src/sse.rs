//! Server-Sent Events, read as the WHATWG specification says: a message is dispatched at its
//! blank line only, so one cut off by a dropped connection is never half-read.

/// One message of a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    pub id: Option<String>,
    /// `message` when the stream names no type.
    pub event: String,
    pub data: String,
}

/// Reads messages out of the bytes of one connection, as they come.
#[derive(Debug, Default)]
pub struct Parser {
    pending: Vec<u8>,
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
}

impl Parser {
    /// The messages completed by `bytes`.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Message> {
        self.pending.extend_from_slice(bytes);
        let mut messages = vec![];
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                messages.extend(self.dispatch());
            } else {
                self.field(&line);
            }
        }
        messages
    }

    fn field(&mut self, line: &str) {
        if line.starts_with(':') {
            return; // a comment: the keep-alive
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "id" => self.id = Some(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<Message> {
        let event = self.event.take();
        let data = self.data.take();
        let id = self.id.take();
        if event.is_none() && data.is_none() {
            return None;
        }
        Some(Message {
            id,
            event: event.unwrap_or_else(|| "message".to_owned()),
            data: data.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_across_reads_are_dispatched_at_their_blank_line() {
        let mut parser = Parser::default();
        assert!(parser
            .feed(b": keep-alive\n\nid: 4\nevent: LogL")
            .is_empty());
        let messages = parser.feed(b"ine\r\ndata: {\"a\":1}\r\n\r\nid: 5\ndata: x\n");
        assert_eq!(
            messages,
            vec![Message {
                id: Some("4".into()),
                event: "LogLine".into(),
                data: "{\"a\":1}".into(),
            }]
        );
        assert_eq!(parser.feed(b"\n")[0].data, "x");
    }

    #[test]
    fn a_message_cut_off_before_its_blank_line_is_never_dispatched() {
        let mut parser = Parser::default();
        assert!(parser.feed(b"id: 9\nevent: Applied\ndata: {}\n").is_empty());
    }

    #[test]
    fn data_lines_join_with_newlines() {
        let mut parser = Parser::default();
        let messages = parser.feed(b"data: a\ndata: b\n\n");
        assert_eq!(messages[0].data, "a\nb");
        assert_eq!(messages[0].event, "message");
    }
}
