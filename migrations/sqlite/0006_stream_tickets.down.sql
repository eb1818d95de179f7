DROP TABLE stream_tickets;
