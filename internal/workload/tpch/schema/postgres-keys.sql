-- Primary keys, foreign keys (the planner uses them to estimate joins) and
-- the usual indexes on the foreign keys and the date columns the queries
-- filter on; made after the load, then every table is analyzed.
alter table region add primary key (r_regionkey);
alter table nation add primary key (n_nationkey);
alter table supplier add primary key (s_suppkey);
alter table customer add primary key (c_custkey);
alter table part add primary key (p_partkey);
alter table partsupp add primary key (ps_partkey, ps_suppkey);
alter table orders add primary key (o_orderkey);
alter table lineitem add primary key (l_orderkey, l_linenumber);
alter table nation add foreign key (n_regionkey) references region;
alter table supplier add foreign key (s_nationkey) references nation;
alter table customer add foreign key (c_nationkey) references nation;
alter table partsupp add foreign key (ps_partkey) references part;
alter table partsupp add foreign key (ps_suppkey) references supplier;
alter table orders add foreign key (o_custkey) references customer;
alter table lineitem add foreign key (l_orderkey) references orders;
alter table lineitem add foreign key (l_partkey, l_suppkey) references partsupp;
create index on nation (n_regionkey);
create index on supplier (s_nationkey);
create index on customer (c_nationkey);
create index on partsupp (ps_suppkey);
create index on orders (o_custkey);
create index on orders (o_orderdate);
create index on lineitem (l_partkey, l_suppkey);
create index on lineitem (l_suppkey);
create index on lineitem (l_shipdate);
analyze;
