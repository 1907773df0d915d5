"""JDBC-style sinks to PostgreSQL, on psycopg."""
