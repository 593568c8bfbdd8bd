import pandas as pd
from sklearn.linear_model import LogisticRegression
df = pd.read_csv('data.csv')
cols = ['rate_marriage', 'age', 'yrs_married', 'children', 'religious', 'educ', 'occupation']
y = (df['affairs'] > 0).astype(int)
model = LogisticRegression(max_iter=1000).fit(df[cols][:5000], y[:5000])
pd.DataFrame({'pred': model.predict(df[cols][5000:])}).to_csv('predictions.csv', index=False)
pd.DataFrame({'label': y[5000:]}).to_csv('labels.csv', index=False)
